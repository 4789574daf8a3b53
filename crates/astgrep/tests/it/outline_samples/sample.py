"""A module."""
import functools

MAX_DEPTH = 10
registry = {}


# The base of every command.
class BaseCommand:
    """A command."""

    allow_extra = False

    def __init__(self, name):
        self.name = name

    @property
    def title(self):
        return self.name.title()

    @title.setter
    def title(self, value):
        self.name = value

    @functools.lru_cache(maxsize=None)
    def main(self, args=None):
        def helper(x):
            return x
        local = helper(args)
        return local

    class Options:
        verbose = True

        def parse(self, argv):
            return argv


def echo(message=None, file=None):
    print(message, file=file)


@functools.wraps(echo)
def secho(*args):
    return echo(*args)
