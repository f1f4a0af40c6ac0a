"""bytegraph.translator"""
