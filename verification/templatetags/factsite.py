from django import template

register = template.Library()


@register.filter
def percent(fraction: float | None) -> str:
    """0.666 → "67%"; no score → "—" (no evidence is not the same as 0%)."""
    return "—" if fraction is None else f"{fraction:.0%}"
