# The two commands of the README's first screen. Only Python 3.11+ and the package registries needed.
#   make demo   .venv, install, load the sample account history, open the console (DEMO_NO_UI=1: no console)
#   make test   the whole suite as CI runs it (bash .ci/run)
.PHONY: demo test

export LITELLM_LOCAL_MODEL_COST_MAP := True

demo: .venv/.amem-console
	.venv/bin/amem demo $(if $(DEMO_NO_UI),--no-ui)

test:
	bash .ci/run

.venv/.amem-console: pyproject.toml .ci/constraints.txt
	bash .ci/install console
	touch $@
