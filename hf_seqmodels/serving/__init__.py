"""Using a saved model: translation and generation (`inference`), the CTranslate2 export and its translator
(`ctranslate2_export`), and what every back end returns (`translations`)."""
