"""The course's tools: benchmarks and measurements that no lesson and no CLI command
imports, run from the checkout as `python -m tools.<name>`."""
