"""thunder-lint's HTTP service: ``create_app`` (FastAPI) over a pool of lint worker processes.

Imports point down (server -> analyzer -> rules); nothing here imports torch or runs submitted code.
"""
