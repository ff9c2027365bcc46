"""Answers a verdict that is not one of the three."""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import serve

serve(lambda msg: {"id": msg["id"], "verdict": "maybe", "message": "who knows"})
