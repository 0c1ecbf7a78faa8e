"""Reading and writing biLM files: bilm-tf HDF5, TF checkpoints, ELMoForManyLangs, Parquet output."""
