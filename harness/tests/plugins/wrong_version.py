"""Speaks protocol version 2 in the handshake."""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import good, serve

sys.stderr.write("speaking version 2\n")
sys.stderr.flush()
serve(good, version=2)
