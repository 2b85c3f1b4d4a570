# Targets of the verified-publishing pipeline; included from the Makefile
# (`include verify/make.mk`), which defines PY (the venv's python), STAMP (its install) and
# node_modules/.package-lock.json (`npm ci`: Pyodide and fzstd, which every build copies into the site).
PY ?= python3

.PHONY: gpu-check gpu-outputs publish

## gpu-check: on a GPU machine, build the site, run the extracted NCCL check on every visible GPU and the gpu tests (REQUIRE_GPU=1), each in a scope ended before the next (verify/scope.py), collect their outputs in verification/, then write verification/nccl_check.json from them
gpu-check: gpu-outputs
	$(PY) -m verify.write_record verification

## gpu-outputs: the first half of gpu-check (the gpu job): run and collect, write no record
gpu-outputs: $(TEST_STAMP) node_modules/.package-lock.json
	$(PY) -m verify.config mkdocs.yml
	$(PY) -m verify.gpu_check --out verification

## publish: strict build for publication into site/ (refuses a missing, stale, failed or fixture record; GUIDE_VERIFICATION_RECORD overrides the path) in a scope ended before anything reads site/ (verify/publish.py), then the check of site/ as uploaded, in a fresh process: site-manifest.json and artifact.tar (the files checked)
publish: $(STAMP) node_modules/.package-lock.json
	$(PY) -m verify.config mkdocs.yml
	$(PY) -m verify.publish site --manifest site-manifest.json --tar artifact.tar
