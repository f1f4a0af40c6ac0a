"""bytegraph.variables"""
