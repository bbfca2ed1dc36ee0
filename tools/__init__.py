"""Small measurements of gpu_course itself (run with ``python -m tools.<name>``)."""
