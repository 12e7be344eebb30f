# smores_assembly — set-up, main job and tests on a machine without a ROS install.
# Everything lands in $(VENV); every step is skipped when already done.
VENV      ?= .venv
PYTHON    ?= python3
BUILD     ?= build
PY        := $(VENV)/bin/python
DEPS      := $(VENV)/.deps-installed
INSTALLED := $(BUILD)/.installed
SCENARIO  ?= config/scenarios/mobile_manipulator.yaml
OUT       ?= out/task1
SOURCES   := $(shell find msg action smores_assembly launch config scripts description -type f \
               -not -name '*.pyc' 2>/dev/null) CMakeLists.txt package.xml

.PHONY: demo test bench setup clean
demo: setup  ## assemble the paper's Task 1 on the fake hardware, report in $(OUT)
	$(PY) -m smores_assembly.cli run $(SCENARIO) --out $(OUT)

test: setup  ## run the whole test suite
	$(PY) -m pytest -q test

bench: setup
	$(PY) -m bench

setup: $(INSTALLED)

$(DEPS): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.txt
	touch $@

# Generate the interfaces and install package + interfaces into the venv (incremental).
$(INSTALLED): $(DEPS) $(SOURCES)
	test -f $(BUILD)/CMakeCache.txt || \
	  AMENT_PREFIX_PATH=$(abspath $(VENV)) CMAKE_PREFIX_PATH=$(abspath $(VENV)) \
	  cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(abspath $(VENV)) \
	    -DPython3_EXECUTABLE=$(abspath $(PY)) -DBUILD_TESTING=OFF -Wno-dev > $(BUILD).log
	AMENT_PREFIX_PATH=$(abspath $(VENV)) cmake --build $(BUILD) -j2 >> $(BUILD).log
	cmake --install $(BUILD) > /dev/null
	touch $@

clean:
	rm -rf $(BUILD) $(BUILD).log
