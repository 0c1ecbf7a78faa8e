from elmo_plugin.bilm.bilm import BiLm
from elmo_plugin.bilm.bilm_tf import BilmTfFormatError, export_bilm_tf, load_bilm_tf, read_options
