"""The SageMaker add-on beside the course package: one experiment as a SageMaker training
job (`gpu-course-sagemaker`). It imports gpu_course; gpu_course never imports it."""
