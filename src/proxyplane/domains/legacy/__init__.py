"""Domain rules the legacy account API adds on top of the shared domains (numbering, binding, throttle)."""
