"""Using a saved model: translation and generation (`inference`), the CTranslate2 export and its translator
(`ctranslate2_export`), the recurrent models in int8 on the CPU (`quantization`), and what every back end returns
(`translations`)."""
