"""Support tickets: customers open, read, reply and close; operators answer (emits ticket.replied)."""
