"""The run settings a command line can set, shared by `manage.py verify` and `manage.py
evaluate` (the same names, checked by the same form as the web page)."""

from verification.inputs.forms import DEFAULT_SETTINGS, RETRIEVAL_MODES


def add_run_settings_arguments(parser) -> None:
    parser.add_argument("--model", help="a model from LLM_MODELS (default: the first)")
    parser.add_argument("--mode", choices=[m for m, _ in RETRIEVAL_MODES], help="passage retrieval mode")
    parser.add_argument(
        "--top-k-results", type=int, help=f"web results per claim (default {DEFAULT_SETTINGS['top_k_results']})"
    )
    parser.add_argument(
        "--top-k-passages", type=int, help=f"passages per page (default {DEFAULT_SETTINGS['top_k_passages']})"
    )
    parser.add_argument(
        "--context", type=int, help=f"context sentences around a match (default {DEFAULT_SETTINGS['context_size']})"
    )
