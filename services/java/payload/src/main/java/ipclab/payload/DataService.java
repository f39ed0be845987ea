package ipclab.payload;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import se.espressoshock.models.protoc.Payments;
import se.espressoshock.protos.Users;

/**
 * The data service: the routes, knobs and answers of the Python data service
 * ({@code services/domains/payload/http.py}, its docstring says what each route does), on
 * the JVM. {@code GET /{json|protobuf}/{flat|nested}?count=N} answers N records, their
 * serialisation timed in {@code Server-Timing} ({@code ser}, {@code gzip}); {@code POST}
 * deserialises the body ({@code gunzip}, {@code deser}) and answers
 * {@code {"received": N}}. Bad input gets the same statuses and error codes as in Python;
 * the messages of bodies that do not decode are Jackson's and protobuf-java's own.
 */
final class DataService {
    static final Map<String, String> CONTENT_TYPES =
            Map.of("json", "application/json", "protobuf", "application/x-protobuf");
    static final String ROUTES = "routes: /{json|protobuf}/{flat|nested}";

    private final Settings settings;
    private final Map<String, byte[]> cache = new ConcurrentHashMap<>();
    private final Object inflating = new Object(); // one body inflates at a time

    DataService(Settings settings) {
        this.settings = settings;
    }

    Http.Answer handle(Http.Request r) {
        try {
            if (r.path().equals("/healthz")) {
                return Http.Answer.json(200, Json.bytes(describe()));
            }
            String[] route = route(r.path());
            if (r.method().equals("GET")) {
                return get(r, route[0], route[1]);
            }
            if (r.method().equals("POST")) {
                return post(r, route[0], route[1]);
            }
            throw new Http.Refused(405, "method_not_allowed", "GET or POST");
        } catch (Http.Refused e) {
            return e.answer();
        }
    }

    Map<String, Object> describe() {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("ok", true);
        out.put("settings", settings.describe());
        out.put("protobuf", com.google.protobuf.RuntimeVersion.MAJOR + "."
                + com.google.protobuf.RuntimeVersion.MINOR + "."
                + com.google.protobuf.RuntimeVersion.PATCH);
        out.put("implementation", "java");
        out.put("runtime", RuntimeInfo.describe("data"));
        return out;
    }

    /** {format, structure} of a path, or a 404. */
    static String[] route(String path) throws Http.Refused {
        List<String> parts = new ArrayList<>();
        for (String p : path.split("/")) {
            if (!p.isEmpty()) {
                parts.add(p);
            }
        }
        if (parts.size() != 2 || !CONTENT_TYPES.containsKey(parts.get(0))
                || !(parts.get(1).equals("flat") || parts.get(1).equals("nested"))) {
            throw new Http.Refused(404, "not_found", ROUTES);
        }
        return new String[] {parts.get(0), parts.get(1)};
    }

    static int count(Http.Request r) throws Http.Refused {
        String raw = r.fields().getOrDefault("count", "");
        if (raw.isEmpty() || !raw.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw new Http.Refused(400, "bad_request",
                    "count must be an integer in 0.." + Dataset.MAX_COUNT);
        }
        String digits = raw.replaceFirst("^0+(?=.)", "");
        if (digits.length() > 7 || Integer.parseInt(digits) > Dataset.MAX_COUNT) {
            throw new Http.Refused(400, "bad_request",
                    "count must be in 0.." + Dataset.MAX_COUNT + ", not " + digits);
        }
        return Integer.parseInt(digits);
    }

    static String ms(long nanos) {
        return String.format(Locale.ROOT, "%.3f", nanos / 1e6);
    }

    private Http.Answer get(Http.Request r, String fmt, String structure) throws Http.Refused {
        int n = count(r);
        boolean gz = settings.gzip() && r.header("accept-encoding").contains("gzip");
        String key = fmt + "/" + structure + "/" + n + "/" + gz;
        List<String> timing = new ArrayList<>();
        byte[] body = settings.cache() ? cache.get(key) : null;
        boolean hit = body != null;
        if (body == null) {
            // this format's form, built once per (structure, count, seed), outside the timing
            Dataset ds = Dataset.of(structure, n, settings.seed());
            Object value = fmt.equals("json") ? ds.document() : ds.message();
            long t0 = System.nanoTime();
            body = fmt.equals("json") ? Json.bytes(value) : ((Message) value).toByteArray();
            timing.add("ser;dur=" + ms(System.nanoTime() - t0));
            if (gz) {
                t0 = System.nanoTime();
                body = Gzip.compress(body);
                timing.add("gzip;dur=" + ms(System.nanoTime() - t0));
            }
            if (settings.cache()) {
                cache.put(key, body);
            }
        }
        List<String[]> headers = new ArrayList<>();
        headers.add(new String[] {"content-type", CONTENT_TYPES.get(fmt)});
        headers.add(new String[] {"x-cache", hit ? "hit" : "miss"});
        headers.add(new String[] {"x-elements", Integer.toString(n)});
        if (gz) {
            headers.add(new String[] {"content-encoding", "gzip"});
        }
        if (!timing.isEmpty()) {
            headers.add(new String[] {"server-timing", String.join(", ", timing)});
        }
        return new Http.Answer(200, headers, body);
    }

    private Http.Answer post(Http.Request r, String fmt, String structure) throws Http.Refused {
        String ctype = r.header("content-type").split(";", -1)[0].strip()
                .toLowerCase(Locale.ROOT);
        if (!ctype.equals(CONTENT_TYPES.get(fmt))) {
            throw new Http.Refused(415, "unsupported_media_type",
                    "send " + CONTENT_TYPES.get(fmt));
        }
        String encoding = r.header("content-encoding").strip().toLowerCase(Locale.ROOT);
        boolean gzipped = encoding.equals("gzip") && settings.gzip();
        if (!encoding.isEmpty() && !encoding.equals("identity") && !gzipped) {
            throw new Http.Refused(415, "unsupported_media_type",
                    "content-encoding '" + encoding + "'");
        }
        byte[] raw = r.body();
        List<String> timing = new ArrayList<>();
        if (gzipped) {
            synchronized (inflating) {
                long t0 = System.nanoTime();
                raw = Gzip.inflate(raw, settings.maxInflatedBytes());
                timing.add("gunzip;dur=" + ms(System.nanoTime() - t0));
            }
        }
        long t0 = System.nanoTime();
        int n = decode(fmt, structure, raw);
        timing.add("deser;dur=" + ms(System.nanoTime() - t0));
        Http.Answer answer = Http.Answer.json(200, Json.bytes(Map.of("received", n)));
        answer.headers().add(new String[] {"x-elements", Integer.toString(n)});
        answer.headers().add(new String[] {"server-timing", String.join(", ", timing)});
        return answer;
    }

    /** How many records {@code raw} holds, or a 400 when it is not a document of them. */
    static int decode(String fmt, String structure, byte[] raw) throws Http.Refused {
        boolean flat = structure.equals("flat");
        if (fmt.equals("protobuf")) {
            try {
                return flat ? Users.parseFrom(raw).getUsersCount()
                        : Payments.parseFrom(raw).getPaymentsCount();
            } catch (InvalidProtocolBufferException e) {
                throw new Http.Refused(400, "bad_request",
                        "not a " + structure + " protobuf: " + e.getMessage());
            }
        }
        String key = flat ? "users" : "payments";
        Class<?> type = flat ? Model.Users.class : Model.Payments.class;
        Object doc;
        try {
            doc = Json.MAPPER.readValue(raw, type);
        } catch (IOException e) {
            throw new Http.Refused(400, "bad_request", "invalid JSON: "
                    + e.getMessage().lines().findFirst().orElse(""));
        }
        List<?> records = doc == null ? null  // the JSON literal null
                : flat ? ((Model.Users) doc).users : ((Model.Payments) doc).payments;
        if (records == null || records.contains(null)) {
            throw new Http.Refused(400, "bad_request",
                    "a " + structure + " document is {\"" + key + "\": [{...}]}");
        }
        return records.size();
    }
}
