"""Answers every judgement with a line that is not JSON."""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import serve

serve(lambda msg: "verdict: success (trust me)")
