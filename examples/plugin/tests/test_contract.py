"""The retriever contract HubLab ships (``hublab.testing``), run over this plugin as over every built-in method."""

from hublab.testing.retriever_contract import RetrieverContract


class TestLabelOverlap(RetrieverContract):
    method = "label_overlap"  # the entry-point name it is installed under
