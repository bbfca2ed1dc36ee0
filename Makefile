# The two commands of the README:  `make run`  and  `make test`.
# Each sets up what it needs (idempotent: a second run only checks stamps) and runs.
#   make run            the ladder on the track that fits this machine (ENGINE=gluon|pytorch overrides)
#   make test           every test: unit tests and notebooks (smoke mode), both tracks
#   make lab            JupyterLab on copies of the notebooks in workshop/ (ignored by git)
#   make test-lab       every lesson in JupyterLab in a headless Chromium (make test: lesson 01)
#   make notebooks      re-create the .ipynb files from their paired .py (jupytext)
#   make smoke-times    measure each notebook's smoke time here, into notebooks/SMOKE_TIMES.md

# Python 3.11 exactly: numpy 1.23.5 (the Gluon track) has no 3.12 wheels and the PyTorch
# track's pins have no 3.10 ones. The first of python3.11, python3 that is 3.11; PYTHON= overrides.
IS_311   = $(shell $(1) -c 'import sys; print(sys.version_info[:2] == (3, 11))' 2>/dev/null)
PYTHON   ?= $(firstword $(foreach p,python3.11 python3,$(if $(filter True,$(call IS_311,$(p))),$(p))))
VENV     ?= .venv
ENGINES  := gluon pytorch
GOALS    := $(or $(MAKECMDGOALS),run)
ifneq ($(filter-out clean,$(GOALS)),)
ifneq ($(call IS_311,$(or $(PYTHON),python3)),True)
$(error gpu-course needs Python 3.11 (numpy 1.23.5 has no 3.12 wheels; the PyTorch pins have no 3.10 ones) and found none: tried $(or $(PYTHON),python3.11 and python3). Install it (e.g. apt-get install python3.11 python3.11-venv) or name it: make PYTHON=/path/to/python3.11)
endif
endif
ENGINE   ?= $(shell $(PYTHON) -m gpu_course.engines)
ifneq ($(filter run lab,$(GOALS)),)
ifeq ($(filter $(ENGINE),$(ENGINES)),)
$(error ENGINE=$(ENGINE) is not a track; allowed: gluon, pytorch$(if $(filter torch,$(ENGINE)), (the PyTorch track is ENGINE=pytorch)))
endif
endif
# The MXNet GPU build only where every GPU can run it (gpu_course/engines.py: sm_50..sm_89).
GLUON_EXTRA ?= $(shell $(PYTHON) -m gpu_course.engines --gluon-extra)
# Compiled bytecode goes to one folder (.venv/pycache), written the first time a module is
# imported, never into the checkout: pip compiles nothing (compiling the ~34,000 modules of
# both environments cost setup a minute and a half of CPU, most never imported), and where
# PYTHONDONTWRITEBYTECODE is set (many CI machines) the commands here still write it, or
# every process would compile all it imports again.
export PYTHONPYCACHEPREFIX := $(CURDIR)/.venv/pycache
unexport PYTHONDONTWRITEBYTECODE
PIP_FLAGS ?= -q --disable-pip-version-check --no-compile
SMOKE_RUNS := $(CURDIR)/.venv/test-runs

.PHONY: run test lab setup setup-gluon setup-pytorch test-core test-gluon test-pytorch notebooks clean gpu-check gpu-wheels \
        test-gluon-own test-pytorch-own test-pytorch-tools test-lessons test-gluon-track test-pytorch-track test-gluon-notebooks \
        test-pytorch-notebooks test-gluon-exercises test-pytorch-exercises \
        browser test-browser test-lab workshop smoke-times lock-pytorch

run: setup-$(ENGINE)
	@echo "Track: $(ENGINE) — $$($(PYTHON) -m gpu_course.engines --reason)"
	$(VENV)/$(ENGINE)/bin/gpu-course ladder --engine $(ENGINE) $(ARGS)

# `make test`: both environments set up side by side, then the tests in phases, TEST_JOBS
# at a time (each phase one pytest process, whose output is printed when it ends), then
# every phase's time. Phases wait on subprocesses, kernels and a browser much of the time,
# so more phases than CI's 2 cores keep both busy. The framework-free tests run once
# (`core`, in the PyTorch environment's newer numpy and pandas; `compat`: a few of them
# again in the Gluon environment's older ones); each environment runs its own track's
# tests, notebooks and exercises (tests/conftest.py marks which is which).
TEST_JOBS ?= 4
TIMES := $(CURDIR)/.venv/test-times
PHASE  = tools/phase.sh $@ $(TIMES)
# the longest first: make starts phases in this order
# the browser's first (it waits on Chromium and JupyterLab, the others fill the cores), then
# the longest first, the short ones last: the cores stay busy to the end
TEST_PHASES := test-browser test-pytorch-notebooks test-gluon-notebooks test-pytorch-own \
               test-pytorch-exercises test-pytorch-track test-gluon-own test-gluon-track \
               test-gluon-exercises test-core test-lessons test-pytorch-tools
# tests/pytorch's tests of the tools around the course (the GPU check's rehearsal, the GPU
# session script, the large-batch recipes): a phase of their own
TOOLS_TESTS := test_gpu_check.py test_recipes.py
# OMP_WAIT_POLICY=passive: several phases share the cores, and GNU OpenMP's threads would
# otherwise spin at every barrier while the thread they wait for is switched out (four
# trainings side by side on 2 cores: a third less CPU time in all, PyTorch's halved).
# Inductor's compiled kernels are cached in one folder for every phase and the next run.
SMOKE_ENV = GPU_COURSE_SMOKE=1 GPU_COURSE_RUNS=$(SMOKE_RUNS)/$@ MPLBACKEND=Agg OMP_WAIT_POLICY=passive \
            TORCHINDUCTOR_CACHE_DIR=$(CURDIR)/.venv/inductor-cache
# the notebook and exercise phases' data sets in one folder, never the checkout's data/:
# each set is written once, by the first phase that needs it, and a phase that needs it
# meanwhile waits for that writer (gpu_course/data: a lock per folder); the other phases
# get a folder of their own from tests/conftest.py
NB_DATA = GPU_COURSE_DATA=$(SMOKE_RUNS)/data
# each notebook in a kernel of its own, forked from one that imported the track already
# (tools/warm_kernel.py: seconds of imports a notebook, the same run top to bottom)
NBVAL := --nbval-lax --nbval-kernel-name=gpu-course-warm --nbval-cell-timeout=900
WARM = -m tools.warm_kernel run
# In `make test` (IN_TEST) the browser phase runs lesson 01 of each track and, in the Gluon
# environment, the SageMaker notebook top to bottom in JupyterLab, and checks what nbval
# checks (no error; an untouched exercise's check says "not yet") and more: the notebook
# phases leave those to it. A notebook phase run alone runs every notebook.
NB_GLUON = notebooks/gluon $(if $(IN_TEST),--ignore=notebooks/gluon/01_naive.ipynb,notebooks/run_on_sagemaker.ipynb)
NB_PYTORCH = notebooks/pytorch notebooks/run_on_sagemaker.ipynb \
             $(if $(IN_TEST),--ignore=notebooks/pytorch/01_naive.ipynb)
PYTEST := -m pytest -q --durations=5

test:
	$(MAKE) --no-print-directory -j2 --output-sync=target setup-gluon setup-pytorch browser
	rm -rf $(SMOKE_RUNS) $(TIMES)
	@echo "Testing in $(words $(TEST_PHASES)) phases, $(TEST_JOBS) at a time: each prints when it ends."
	@start=$$(date +%s); \
	TEST_START=$$start $(MAKE) --no-print-directory -k -j$(TEST_JOBS) --output-sync=target IN_TEST=1 \
	  $(TEST_PHASES); rc=$$?; \
	secs=$$(( $$(date +%s) - start )); \
	echo "make test: each phase's wall time and its processes' CPU time ($(TEST_JOBS) phases at a time)"; \
	cat $(TIMES)/* 2>/dev/null; printf '%-22s %3d:%02d  %s\n' "all phases" $$((secs / 60)) $$((secs % 60)) \
	  "$$([ $$rc = 0 ] && echo passed || echo FAILED)"; exit $$rc

# Each phase collects only the folders that hold its tests (collecting tests/pytorch or
# tests/lessons imports them: seconds of CPU): tests/conftest.py marks every test in
# tests/gluon, tests/pytorch and tests/browser `track`, and `shared` only files directly
# in tests/.
TRACK_DIRS := --ignore=tests/gluon --ignore=tests/pytorch --ignore=tests/browser

# the framework-free tests, once, in two phases of about a minute of CPU each (the lessons'
# and the rest): the last phases to start, short ones keep both cores busy to the end
test-core: setup-pytorch
	$(SMOKE_ENV) $(PHASE) $(VENV)/pytorch/bin/python $(PYTEST) tests -m core $(TRACK_DIRS) \
	  --ignore=tests/lessons $(PYTEST_ARGS)

test-lessons: setup-pytorch
	$(SMOKE_ENV) $(PHASE) $(VENV)/pytorch/bin/python $(PYTEST) tests/lessons -m core $(PYTEST_ARGS)

# each environment: its own tests (tests/<track>; the Gluon one with `compat`), the other
# tests of its track, its notebooks run top to bottom in smoke mode (nbval), and its
# exercises run with their solutions
test-gluon-own: setup-gluon
	$(SMOKE_ENV) $(PHASE) $(VENV)/gluon/bin/python $(PYTEST) tests -m "(track and not shared) or compat" \
	  --ignore=tests/pytorch --ignore=tests/browser $(PYTEST_ARGS)

test-pytorch-own: setup-pytorch
	$(SMOKE_ENV) $(PHASE) $(VENV)/pytorch/bin/python $(PYTEST) tests/pytorch \
	  $(addprefix --ignore=tests/pytorch/,$(TOOLS_TESTS)) $(PYTEST_ARGS)

test-pytorch-tools: setup-pytorch
	$(SMOKE_ENV) $(PHASE) $(VENV)/pytorch/bin/python $(PYTEST) $(addprefix tests/pytorch/,$(TOOLS_TESTS)) $(PYTEST_ARGS)

test-gluon-track: setup-gluon
	$(SMOKE_ENV) $(PHASE) $(VENV)/gluon/bin/python $(PYTEST) tests -m shared $(TRACK_DIRS) \
	  --ignore=tests/lessons --ignore=tests/test_exercise_cells.py $(PYTEST_ARGS)

test-pytorch-track: setup-pytorch
	$(SMOKE_ENV) $(PHASE) $(VENV)/pytorch/bin/python $(PYTEST) tests -m shared $(TRACK_DIRS) \
	  --ignore=tests/lessons --ignore=tests/test_exercise_cells.py $(PYTEST_ARGS)

test-gluon-notebooks: setup-gluon
	$(SMOKE_ENV) $(NB_DATA) $(PHASE) $(VENV)/gluon/bin/python $(WARM) gluon -- \
	  $(VENV)/gluon/bin/python $(PYTEST) $(NBVAL) $(NB_GLUON) $(PYTEST_ARGS)

test-pytorch-notebooks: setup-pytorch
	$(SMOKE_ENV) $(NB_DATA) $(PHASE) $(VENV)/pytorch/bin/python $(WARM) torch -- \
	  $(VENV)/pytorch/bin/python $(PYTEST) $(NBVAL) $(NB_PYTORCH) $(PYTEST_ARGS)

test-gluon-exercises: setup-gluon
	$(SMOKE_ENV) $(NB_DATA) $(PHASE) $(VENV)/gluon/bin/python $(PYTEST) tests/test_exercise_cells.py $(PYTEST_ARGS)

test-pytorch-exercises: setup-pytorch
	$(SMOKE_ENV) $(NB_DATA) $(PHASE) $(VENV)/pytorch/bin/python $(PYTEST) tests/test_exercise_cells.py $(PYTEST_ARGS)

# each environment's whole share, one after the other (what `make test` splits in phases)
test-gluon: test-gluon-own test-gluon-track test-gluon-notebooks test-gluon-exercises
test-pytorch: test-core test-lessons test-pytorch-own test-pytorch-tools test-pytorch-track test-pytorch-notebooks \
              test-pytorch-exercises

setup: setup-gluon setup-pytorch
setup-gluon: $(VENV)/gluon/.installed
setup-pytorch: $(VENV)/pytorch/.installed

$(VENV)/gluon/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)/gluon
	$(VENV)/gluon/bin/pip install $(PIP_FLAGS) -e ".[$(GLUON_EXTRA),lab,trace]"
	$(VENV)/gluon/bin/python -c "import mxnet, gluoncv, pynvml; print('gluon environment: mxnet', mxnet.__version__)"
	touch $@

# constraints/pytorch.txt: the environment pip resolved last time, so that it checks one
# candidate a package instead of searching (the SageMaker SDK v3's 85 packages made that
# search 150 CPU-seconds); `make lock-pytorch` resolves it again after a pin changes
$(VENV)/pytorch/.installed: pyproject.toml constraints/pytorch.txt
	$(PYTHON) -m venv $(VENV)/pytorch
	$(VENV)/pytorch/bin/pip install $(PIP_FLAGS) -c constraints/pytorch.txt -e ".[torch,lab,trace]"
	$(VENV)/pytorch/bin/python -c "import torch, pynvml; print('pytorch environment: torch', torch.__version__)"
	touch $@

lock-pytorch:
	rm -rf $(VENV)/lock && $(PYTHON) -m venv $(VENV)/lock
	$(VENV)/lock/bin/pip install $(PIP_FLAGS) -e ".[torch,lab,trace]"
	{ grep '^#' constraints/pytorch.txt; $(VENV)/lock/bin/pip freeze --exclude-editable | grep -iv '^gpu.course' \
	  | sed -E 's/\+[A-Za-z0-9.]+$$//'; } > constraints/pytorch.txt.new   # no local labels: +cpu or a CUDA build
	mv constraints/pytorch.txt.new constraints/pytorch.txt && rm -rf $(VENV)/lock

# JupyterLab in a headless Chromium (tests/browser): lesson 01 of each track and the
# SageMaker notebook from `make test`, every lesson from `make test-lab`.
test-browser: setup-gluon setup-pytorch browser
	GPU_COURSE_BROWSER=first $(PHASE) sh -c '$(VENV)/gluon/bin/python -m pytest -q tests/browser \
	  $(PYTEST_ARGS) && $(VENV)/pytorch/bin/python -m pytest -q tests/browser $(PYTEST_ARGS)'

test-lab: setup-gluon setup-pytorch browser
	GPU_COURSE_BROWSER=all $(VENV)/gluon/bin/python -m pytest -q tests/browser $(PYTEST_ARGS)
	GPU_COURSE_BROWSER=all $(VENV)/pytorch/bin/python -m pytest -q tests/browser $(PYTEST_ARGS)

# Debian's chromium and chromium-driver; installed once (apt-get needs root or sudo). In
# `make test`'s phases it was installed already: no job, so the browser phase starts first.
BROWSER_INSTALL = if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	else SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium chromium-driver; fi
browser:
	@$(if $(IN_TEST),,$(BROWSER_INSTALL))

# Attendees run copies: workshop/ is ignored by git, so running and saving a lesson never
# touches the checkout (a later `git pull` cannot conflict). tools/workshop.py copies what
# is missing, brings copies never edited up to date, keeps edited ones and says so, never
# leaves a copy cut short, and stops with exit status 1 naming the path on an error.
lab: setup-$(ENGINE) workshop
	$(VENV)/$(ENGINE)/bin/jupyter lab workshop

workshop:
	$(PYTHON) -m tools.workshop

notebooks: setup-gluon
	$(VENV)/gluon/bin/jupytext --sync notebooks/run_on_sagemaker.py notebooks/*/*.py

smoke-times: setup-gluon setup-pytorch
	$(VENV)/gluon/bin/python -m tools.notebook_times --write notebooks/SMOKE_TIMES.md
	$(VENV)/pytorch/bin/python -m tools.notebook_times --write notebooks/SMOKE_TIMES.md

# The GPU check (tools/gpu_check.py, docs/gpu-check.md): on a machine with one GPU, with
# its own Python (no virtual environment needed), within GPU_BUDGET seconds: every PyTorch
# notebook at smoke size, then at the check's size the most needed first, then the
# ladder, the gpu-marked tests and the monitor against nvidia-smi. `make gpu-wheels` here
# fetches what a machine without a network lacks (Jupyter's kernel and client) as cp312
# wheels into .whl/.
GPU_PYTHON ?= python3
GPU_BUDGET ?= 480
gpu-check:
	PYTHONPATH=.$${PYTHONPATH:+:$$PYTHONPATH} $(GPU_PYTHON) -m tools.gpu_check --budget $(GPU_BUDGET) --out $${OUT:-gpu-check}

gpu-wheels:
	$(PYTHON) -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
	  $(foreach n,5 17 24 26 27 28 31 34 35,--platform manylinux_2_$(n)_x86_64) \
	  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl -r tools/gpu_wheels.txt

# generated data only: a downloaded CIFAR-10 (cifar-10-binary.tar.gz and its folder) stays
clean:
	rm -rf $(VENV) runs .lab-test data/synthetic-v* data/prepared data/caltech256-like data/.*.tmp*
