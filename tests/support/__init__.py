"""What the tests share besides fixtures: real local servers (llama.cpp, Milvus, MLflow, Oxigraph), process helpers,
the real parts CI requires, browser and baseline helpers. Imported as ``support.<module>`` (tests/ is on the path)."""
