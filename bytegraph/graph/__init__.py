"""bytegraph.graph"""
