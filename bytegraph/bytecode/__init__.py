"""bytegraph.bytecode"""
