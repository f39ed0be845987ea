package ipclab.payload;

import java.io.InputStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** A request and an answer as the services see them, whatever server carries them. */
final class Http {
    private Http() {
    }

    /** One request: its header names lower-cased, its body read whole (within the limit). */
    record Request(String method, String path, String query, Map<String, String> headers,
            byte[] body) {
        String header(String name) {
            return headers.getOrDefault(name, "");
        }

        /** The query's fields, the last value of a repeated one ({@code dict(parse_qsl)}). */
        Map<String, String> fields() {
            Map<String, String> out = new HashMap<>();
            for (String pair : query.split("&")) {
                if (pair.isEmpty()) {
                    continue;
                }
                int eq = pair.indexOf('=');
                String k = eq < 0 ? pair : pair.substring(0, eq);
                String v = eq < 0 ? "" : pair.substring(eq + 1);
                try {
                    out.put(URLDecoder.decode(k, StandardCharsets.UTF_8),
                            URLDecoder.decode(v, StandardCharsets.UTF_8));
                } catch (IllegalArgumentException e) {
                    out.put(k, v); // a malformed escape is kept as it came
                }
            }
            return out;
        }
    }

    /**
     * One answer: status, headers in order, and its body, whole ({@code body}) or, when
     * {@code stream} is not null, read from it as it is sent ({@code length} bytes, or -1:
     * unknown, sent chunked): the edge passes a large answer through without holding it.
     */
    record Answer(int status, List<String[]> headers, byte[] body, InputStream stream,
            long length) {
        Answer(int status, List<String[]> headers, byte[] body) {
            this(status, headers, body, null, body.length);
        }

        static Answer json(int status, byte[] body) {
            List<String[]> headers = new ArrayList<>();
            headers.add(new String[] {"content-type", "application/json"});
            return new Answer(status, headers, body);
        }
    }

    /** A request answered with a 4xx or 5xx and an error document. */
    static final class Refused extends Exception {
        final int status;
        final String error;

        Refused(int status, String error, String message) {
            super(message, null, false, false);
            this.status = status;
            this.error = error;
        }

        Answer answer() {
            Map<String, String> doc = new java.util.LinkedHashMap<>();
            doc.put("error", error);
            doc.put("message", getMessage());
            return Answer.json(status, Json.bytes(doc));
        }
    }
}
