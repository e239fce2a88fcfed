# nvcre-hera: `make run` certifies the embedded simulated cluster, `make test` runs every test.
# Both set up .venv from pyproject.toml on first use; nothing else needs installing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
CLUSTER ?= examples/clusters/healthy-h100-16.yaml
CERT    ?= examples/certification.yaml

.PHONY: run test browser-deps bench validate compile flows clean e2e e2e-up e2e-down e2e-controlplane-test e2e-launch launch-deps

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/nvcre certify $(CERT) --cluster $(CLUSTER) --out out

test: $(STAMP) browser-deps
	$(BIN)/python -m pytest

# tests/test_report_browser.py renders every golden report in Debian's headless chromium (skipped without it)
browser-deps:
	@if ! command -v chromium >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; \
	  else echo "browser test: needs Debian's chromium (apt-get install chromium, as root); it will be skipped"; fi; fi

bench: $(STAMP)
	$(BIN)/python bench/bench_cli.py
	$(BIN)/python bench/bench_certify.py
	$(BIN)/python bench/bench_parse.py
	$(BIN)/python bench/bench_diagnose.py
	$(BIN)/python bench/bench_diagnose_scale.py
	$(BIN)/python bench/bench_diagnose_release.py
	$(BIN)/python bench/bench_report.py
	$(BIN)/python bench/bench_fleet.py

validate: $(STAMP)
	$(BIN)/nvcre validate $(CERT)

compile: $(STAMP)
	$(BIN)/nvcre compile $(CERT)

flows: $(STAMP)
	$(BIN)/hera generate yaml flows/ --to out/flows

# The real control plane on loopback (etcd, kube-apiserver, Argo controller + server): README "Real control plane".
E2E_STATE ?= .e2e/run
e2e-up: $(STAMP)
	bash e2e/build.sh
	$(BIN)/python -m nvcre_hera.controlplane up --state-dir $(E2E_STATE)

e2e-down: $(STAMP)
	$(BIN)/python -m nvcre_hera.controlplane down --state-dir $(E2E_STATE)

# make e2e: every example certification x example cluster (and the failure paths) on the real Argo controller and
# on the local executor, compared; summary in out/e2e/summary.json. Always takes the control plane down again.
e2e: e2e-up launch-deps
	set +e; mkdir -p out/e2e; rm -f out/e2e/summary.txt; \
	NVCRE_E2E_STATE=$(E2E_STATE) $(BIN)/python -m pytest -m e2e tests/e2e; t=$$?; \
	$(BIN)/python e2e/differential.py --state-dir $(E2E_STATE); d=$$?; \
	$(BIN)/python -m nvcre_hera.controlplane down --state-dir $(E2E_STATE) > out/e2e/down.log 2>&1 \
	  || { cat out/e2e/down.log; d=1; }; \
	echo "e2e: pytest -m e2e exit $$t, differential exit $$d"; \
	cat out/e2e/summary.txt 2>/dev/null || echo "e2e: no summary (the differential did not finish)"; \
	test $$t -eq 0 -a $$d -eq 0

e2e-controlplane-test: e2e-up
	NVCRE_E2E_STATE=$(E2E_STATE) $(BIN)/python -m pytest -m e2e tests/e2e/test_controlplane.py

# The MPIJob / torchrun launch run for real in network namespaces (tests/e2e/test_launch.py, README "Launch test"):
# needs root, Debian's Open MPI, OpenSSH and iproute2, and torch (the `launch` extra: the PyPI wheel, used on CPU).
LAUNCH_DEBS  := openmpi-bin libopenmpi-dev openssh-server openssh-client iproute2
LAUNCH_STAMP := $(VENV)/.launch-$(shell cksum pyproject.toml | cut -d' ' -f1)
$(LAUNCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e '.[test,launch]'
	rm -f $(VENV)/.launch-*
	touch $(LAUNCH_STAMP)

launch-deps: $(LAUNCH_STAMP)
	@if ! command -v mpicc >/dev/null || ! test -x /usr/sbin/sshd || ! command -v ip >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(LAUNCH_DEBS); \
	  else echo "launch test: needs root and Debian packages $(LAUNCH_DEBS)"; fi; fi

e2e-launch: launch-deps
	$(BIN)/python -m pytest -m e2e tests/e2e/test_launch.py

clean:
	rm -rf $(VENV) out .pytest_cache .hypothesis
