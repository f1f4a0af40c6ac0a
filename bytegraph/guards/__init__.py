"""bytegraph.guards"""
