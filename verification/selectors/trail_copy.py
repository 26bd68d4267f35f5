"""A trail run's trail as it was given, for Edit (the builder filled with it) and Check again (a
new run of it): the JSON shape parse_trail reads, read the way a trail result is
(pipeline/trail_import.result_trail), with every node's stage."""

from verification.models import TrailNode, Verification
from verification.pipeline.trail_import import result_trail


def trail_of_run(verification: Verification) -> dict:
    nodes = TrailNode.objects.filter(verification=verification).order_by("index")
    return result_trail(
        {
            "nodes": [
                {
                    "id": node.key,
                    "text": node.text,
                    "url": node.url,
                    "inputs": list(node.inputs),
                    "step": node.step,
                    "stage": node.stage,
                }
                for node in nodes
            ]
        }
    )
