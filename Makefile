# Thin wrapper over scripts/: the README's two commands and a few conveniences.
.PHONY: survey test build deps clean
survey:            ## install, build, run the main job (mpilab survey)
	scripts/install-deps
	scripts/build
	.venv/bin/mpilab survey
test:              ## install, build, run every test
	scripts/test
build:
	scripts/build
deps:
	scripts/install-deps
clean:
	rm -rf build build-asan build-mpich build-smpi
