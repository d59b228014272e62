"""Email (issue 34): messages rendered from text + HTML templates into the stored outbox (compose.py,
outbox.py), customer notifications with per-kind choices and one-click unsubscribe (notify.py), the
operator's view of the outbox (operator_ops.py). Sending is the mail job's (jobs/mail.py)."""
