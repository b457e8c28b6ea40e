"""The CUDA tier reuses the differential suite's cases (tests/compiler)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "compiler"))
