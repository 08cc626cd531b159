// The AI SDK logs every warning to the console; the tests assert on them instead.
(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;
