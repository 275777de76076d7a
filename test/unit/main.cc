// perfcached — CppUTest runner for the unit tests.
// Copyright (c) 2026 the perfcached authors.
#include "CppUTest/CommandLineTestRunner.h"

int main(int argc, char** argv) { return CommandLineTestRunner::RunAllTests(argc, argv); }
