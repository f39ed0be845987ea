package ipclab.payload;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The data service's knobs, from the environment as the Python service reads them
 * ({@code http.Settings.from_env}): {@code IPCLAB_GZIP}, {@code IPCLAB_CACHE},
 * {@code IPCLAB_SEED}, {@code IPCLAB_MAX_BODY_BYTES}, {@code IPCLAB_MAX_INFLATED_BYTES};
 * {@code IPCLAB_JSON_LIBRARY} must be {@code jackson} (or unset): the JVM services have one
 * JSON encoder, and a run that asks for another is refused rather than silently served by
 * this one. Allocation tracing ({@code IPCLAB_TRACE_ALLOC}) is Python's and is refused too.
 */
record Settings(boolean gzip, boolean cache, int seed, long maxBodyBytes,
        long maxInflatedBytes) {
    static final String JSON_LIBRARY = "jackson";
    static final int DEFAULT_SEED = 2021;
    static final long MAX_BODY_BYTES = 64L << 20;
    static final long MAX_INFLATED_BYTES = 128L << 20;

    static Settings fromEnv(Map<String, String> env) {
        String library = env.getOrDefault("IPCLAB_JSON_LIBRARY", JSON_LIBRARY);
        if (!library.isEmpty() && !library.equals(JSON_LIBRARY)) {
            throw new IllegalArgumentException("IPCLAB_JSON_LIBRARY=" + library
                    + ": the JVM data service encodes JSON with " + JSON_LIBRARY + " only");
        }
        if (flag(env, "IPCLAB_TRACE_ALLOC")) {
            throw new IllegalArgumentException(
                    "IPCLAB_TRACE_ALLOC=1: allocation tracing is the Python service's");
        }
        return new Settings(flag(env, "IPCLAB_GZIP"), flag(env, "IPCLAB_CACHE"),
                Integer.parseInt(env.getOrDefault("IPCLAB_SEED", "" + DEFAULT_SEED)),
                Long.parseLong(env.getOrDefault("IPCLAB_MAX_BODY_BYTES", "" + MAX_BODY_BYTES)),
                Long.parseLong(env.getOrDefault("IPCLAB_MAX_INFLATED_BYTES",
                        "" + MAX_INFLATED_BYTES)));
    }

    static boolean flag(Map<String, String> env, String name) {
        String raw = env.getOrDefault(name, "0").strip().toLowerCase(java.util.Locale.ROOT);
        switch (raw) {
            case "1", "true", "on":
                return true;
            case "0", "false", "off", "":
                return false;
            default:
                throw new IllegalArgumentException(name + "=" + raw + ": use 1 or 0");
        }
    }

    /** As the Python service describes its settings in {@code /healthz}. */
    Map<String, Object> describe() {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("json_library", JSON_LIBRARY);
        out.put("gzip", gzip);
        out.put("cache", cache);
        out.put("seed", seed);
        out.put("max_body_bytes", maxBodyBytes);
        out.put("max_inflated_bytes", maxInflatedBytes);
        out.put("trace_alloc", false);
        return out;
    }
}
