# Thin wrapper over CMake so that two commands do everything on a fresh
# Debian machine:  `make demo` (set up, build, run the main job) and
# `make test` (set up, build, run the test suite).
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
SOAK_RUNS ?= 20
SOAK_OPTS ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all setup build demo test test-asan fuzz format format-check bench clean

all: build

setup:
	@scripts/setup

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

build: setup $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	$(BUILD)/zepsim compare

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The same tests under AddressSanitizer and UBSan (CI runs this too).
test-asan: setup
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DZS_SANITIZE=ON -DZS_WITH_HW=OFF $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS)

# libFuzzer on every reader (tests/fuzz, docs/reliability.md) for
# FUZZ_SECONDS each, under ASan/UBSan; needs clang (scripts/setup --fuzz).
fuzz: build
	@scripts/setup --fuzz
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZS_FUZZ=ON -DZS_WITH_HW=OFF $(CMAKE_FLAGS)
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_all
	scripts/fuzz $(FUZZ_BUILD) $(FUZZ_SECONDS) $(BUILD)/zepsim

# The benchmarks (never run by ctest): trace reading, the analytic backend
# against SimGrid, and the soak (the default compare SOAK_RUNS times, memory
# and descriptors checked for growth; SOAK_OPTS="--backend analytic" for a
# quick one). Exits 1 when the soak saw growth or a failure.
bench: build
	scripts/bench-trace $(BUILD)/zepsim
	scripts/bench-backends $(BUILD)/zepsim
	scripts/bench-soak $(BUILD)/zepsim $(SOAK_RUNS) -- $(SOAK_OPTS)

format: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) --target format

format-check: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) --target format-check

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
