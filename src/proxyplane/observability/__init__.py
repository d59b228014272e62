"""Running it in production: metrics (metrics.py, Prometheus), health (health.py), request ids and the
HTTP middleware (http.py), logs (logs.py: JSON lines, secrets redacted). The gateway's own metrics and
its metrics/health port are in gateway/metrics.py and gateway/metrics_http.py (the gateway imports only
core and storage)."""
