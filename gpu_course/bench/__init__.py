"""Small measurements of gpu_course itself (run with ``python -m gpu_course.bench.<name>``)."""
