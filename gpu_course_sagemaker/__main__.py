"""`python -m gpu_course_sagemaker`: the `gpu-course-sagemaker` command."""
import sys

from gpu_course_sagemaker.launch import main

sys.exit(main())
