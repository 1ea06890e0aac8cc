"""Fault injection for the kill -9 suite: with ``HUBLAB_KILL_AT=<MilvusVectorStore method>:<n>`` on a hublab
subprocess (this folder first on PYTHONPATH), the process SIGKILLs itself on entering the n-th call of that
method — a kill at an exact point of the index build that polling from outside cannot hit reliably."""

import os

_spec = os.environ.get("HUBLAB_KILL_AT")
if _spec:
    import signal

    from hublab.vectorstore import milvus

    _name, _n = _spec.split(":")
    _orig = getattr(milvus.MilvusVectorStore, _name)
    _calls = [0]

    def _wrapped(self, *args, **kwargs):
        _calls[0] += 1
        if _calls[0] == int(_n):
            os.kill(os.getpid(), signal.SIGKILL)
        return _orig(self, *args, **kwargs)

    setattr(milvus.MilvusVectorStore, _name, _wrapped)
