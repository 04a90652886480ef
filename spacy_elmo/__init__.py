"""spacy-elmo"""
