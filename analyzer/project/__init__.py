"""The project-level analysis: which code of the linted files is compiled, by which compiler, from where.

See README.md beside this file. The modules are imported by their own names (``analyzer.project.index``);
nothing is re-exported here, so importing the package costs nothing.
"""
