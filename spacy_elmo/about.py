__title__ = "spacy-elmo"
__version__ = "0.1.0"
