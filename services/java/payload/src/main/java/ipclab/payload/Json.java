package ipclab.payload;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamWriteFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;

/**
 * The one Jackson mapper of the services. Jackson's defaults but three, each stated: doubles
 * written by the shortest representation that reads back (Jackson's "fast" writer, the
 * Schubfach algorithm; the JDK 17 {@code Double.toString} it replaces is not always the
 * shortest), which is what Python's {@code repr} and orjson write, so the JSON bytes can
 * match the Python services'; and unknown keys in a posted record ignored (as Quarkus's own
 * mapper does, and as the Python service, which only counts the records); and a document
 * followed by anything but white space refused, as Python's JSON decoders refuse it.
 */
final class Json {
    static final ObjectMapper MAPPER = JsonMapper.builder()
            .enable(StreamWriteFeature.USE_FAST_DOUBLE_WRITER)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();

    private Json() {
    }

    static byte[] bytes(Object value) {
        try {
            return MAPPER.writeValueAsBytes(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write " + value.getClass(), e);
        }
    }
}
