"""bytegraph.runtime"""
