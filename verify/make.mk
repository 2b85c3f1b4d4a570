# Targets of the verified-publishing pipeline; included from the Makefile
# (`include verify/make.mk`), which defines PY (the venv's python) and STAMP (its install).
PY ?= python3

.PHONY: gpu-check publish

## gpu-check: on a GPU machine, build the site, run the extracted NCCL check on every visible GPU and the gpu tests (REQUIRE_GPU=1), write verification/nccl_check.json
gpu-check: $(TEST_STAMP)
	$(PY) -m verify.gpu_check --record verification/nccl_check.json

## publish: strict build for publication into site/; refuses a missing, stale, failed or fixture record (GUIDE_VERIFICATION_RECORD overrides the path)
publish: $(STAMP)
	GUIDE_PUBLISH=1 $(PY) -m mkdocs build --strict --site-dir site
