# Targets of the verified-publishing pipeline; included from the Makefile
# (`include verify/make.mk`), which defines PY (the venv's python) and STAMP (its install).
PY ?= python3

.PHONY: gpu-check publish

## gpu-check: on a GPU machine, build the site, run the extracted NCCL check on every visible GPU and the gpu tests (REQUIRE_GPU=1), write verification/nccl_check.json
gpu-check: $(TEST_STAMP)
	$(PY) -m verify.config mkdocs.yml
	$(PY) -m verify.gpu_check --record verification/nccl_check.json

## publish: strict build for publication into site/ (refuses a missing, stale, failed or fixture record; GUIDE_VERIFICATION_RECORD overrides the path), then the check of site/ as uploaded, in a fresh process: site-manifest.json and artifact.tar (the files checked)
publish: $(STAMP)
	$(PY) -m verify.config mkdocs.yml
	GUIDE_PUBLISH=1 $(PY) -m mkdocs build --strict --site-dir site
	$(PY) -m verify.artifact site --manifest site-manifest.json --tar artifact.tar
