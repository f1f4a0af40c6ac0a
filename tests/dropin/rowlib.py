"""What every drop-in row script shares: a backend that counts the graphs it is
given (the same callable under torch.compile and under ``bytegraph run``)."""
import atexit

GRAPHS = [0]


def counting(gm, example_inputs, **kwargs):
    """A torch.compile backend: counts graphs, shows the extra arguments it got, runs the graph."""
    GRAPHS[0] += 1
    if kwargs:
        print("backend got", sorted(kwargs.items()))
    return gm.forward


def report():
    print("graphs:", GRAPHS[0])


atexit.register(report)
