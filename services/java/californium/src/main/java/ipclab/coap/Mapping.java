package ipclab.coap;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.eclipse.californium.core.coap.CoAP.Code;
import org.eclipse.californium.core.coap.CoAP.ResponseCode;
import org.eclipse.californium.core.coap.MessageFormatException;
import org.eclipse.californium.core.coap.Option;
import org.eclipse.californium.core.coap.OptionSet;
import org.eclipse.californium.core.coap.Request;
import org.eclipse.californium.core.coap.Response;
import org.eclipse.californium.core.coap.option.MapBasedOptionRegistry;
import org.eclipse.californium.core.coap.option.OptionRegistry;
import org.eclipse.californium.core.coap.option.StandardOptionRegistry;
import org.eclipse.californium.core.coap.option.StringOptionDefinition;
import org.eclipse.californium.core.config.CoapConfig;
import org.eclipse.californium.elements.AddressEndpointContext;
import org.eclipse.californium.elements.config.Configuration;
import org.eclipse.californium.elements.config.UdpConfig;

/**
 * HTTP/1.1 messages to CoAP and back: the mapping of the Python CoAP adapters
 * (services/transports/coap.py, docs/acmeair.md), so that only the implementation differs.
 *
 * <ul>
 * <li>The method as the request code (GET, POST, PUT, DELETE); the path's segments as
 * Uri-Path options and the query's fields as Uri-Query options, as sent (not decoded).
 * <li>Content-Type as the Content-Format (0 and 50 are RFC 7252's; 65000-65002 the
 * experimental numbers the thesis added to Californium); the other headers are dropped, but
 * Cookie and Set-Cookie, carried in the experimental elective options 65000 and 65004.
 * <li>The HTTP status as the CoAP code (200 2.05, 201 2.01, 204 2.04, otherwise class and
 * detail); Californium knows only RFC 7252's codes, so a status whose detail it has no code
 * for comes back as its class's x.00 (a 410 as 4.00, then 400): the Python adapters carry any
 * detail up to 31.
 * </ul>
 */
final class Mapping {
    static final int JSON = 50;
    static final StringOptionDefinition COOKIE =
            new StringOptionDefinition(65000, "Cookie", false, 0, 8192);
    static final StringOptionDefinition SET_COOKIE =
            new StringOptionDefinition(65004, "Set-Cookie", false, 0, 8192);
    /** Californium's options and the two cookie options. */
    static final OptionRegistry OPTIONS = new MapBasedOptionRegistry(
            StandardOptionRegistry.getDefaultOptionRegistry(), COOKIE, SET_COOKIE);
    static final Map<String, Integer> FORMATS = Map.of(
            "text/plain", 0,
            "application/json", JSON,
            "application/x-www-form-urlencoded", 65000,
            "text/css", 65001,
            "application/x-javascript", 65002);
    static final Map<Integer, String> MEDIA = Map.of(
            0, "text/plain; charset=utf-8",
            JSON, "application/json",
            65000, "application/x-www-form-urlencoded",
            65001, "text/css",
            65002, "application/x-javascript");
    static final Map<String, Code> METHODS =
            Map.of("GET", Code.GET, "POST", Code.POST, "PUT", Code.PUT, "DELETE", Code.DELETE);

    private Mapping() {
    }

    /** A header: its name in lower case, and its value. */
    record Header(String name, String value) {
    }

    /**
     * Californium's configuration with the mapping's three changes from its defaults: blocks
     * of 1024 bytes (its default is 512; the Python adapters and the thesis's HTTP bodies use
     * aiocoap's 1024) and a body of up to {@code maxBody} bytes reassembled (its default 8 KiB
     * would refuse AcmeAir's larger answers; the HTTP adapters' cap, limits.MAX_BODY).
     */
    static Configuration configuration(int maxBody) {
        CoapConfig.register();
        UdpConfig.register();
        Configuration config = Configuration.createStandardWithoutFile();
        config.set(CoapConfig.PREFERRED_BLOCK_SIZE, 1024);
        config.set(CoapConfig.MAX_MESSAGE_SIZE, 1024);
        config.set(CoapConfig.MAX_RESOURCE_BODY_SIZE, maxBody);
        return config;
    }

    static Integer contentFormat(String contentType) {
        if (contentType == null) {
            return null;
        }
        String media = contentType.split(";", 2)[0].strip().toLowerCase(Locale.ROOT);
        return FORMATS.get(media);
    }

    /** An HTTP request (method known to {@link #METHODS}) as a CoAP request to {@code peer}. */
    static Request request(String method, String target, List<Header> headers, byte[] body,
            InetSocketAddress peer) {
        Request out = new Request(METHODS.get(method));
        out.setDestinationContext(new AddressEndpointContext(peer));
        int q = target.indexOf('?');
        String path = q < 0 ? target : target.substring(0, q);
        OptionSet opt = out.getOptions();
        for (String segment : path.split("/")) {
            if (!segment.isEmpty()) {
                opt.addUriPath(segment);
            }
        }
        if (q >= 0) {
            for (String field : target.substring(q + 1).split("&")) {
                if (!field.isEmpty()) {
                    opt.addUriQuery(field);
                }
            }
        }
        putHeaders(opt, headers, "cookie", COOKIE);
        if (body.length > 0) {
            out.setPayload(body);
        }
        return out;
    }

    /** An HTTP answer as the CoAP response to a request. */
    static Response response(int status, List<Header> headers, byte[] body) {
        Response out = new Response(codeOf(status));
        putHeaders(out.getOptions(), headers, "set-cookie", SET_COOKIE);
        if (body.length > 0) {
            out.setPayload(body);
        }
        return out;
    }

    private static void putHeaders(OptionSet opt, List<Header> headers, String cookie,
            StringOptionDefinition option) {
        for (Header h : headers) {
            if (h.name().equals("content-type")) {
                Integer format = contentFormat(h.value());
                if (format != null) {
                    opt.setContentFormat(format);
                }
            } else if (h.name().equals(cookie)) {
                opt.addOption(new Option(option, h.value()));
            }
        }
    }

    /** The headers {@link #putHeaders} carried, back from the options. */
    static List<Header> headers(OptionSet opt, String cookie, StringOptionDefinition option) {
        List<Header> out = new ArrayList<>();
        if (opt.hasContentFormat() && MEDIA.containsKey(opt.getContentFormat())) {
            out.add(new Header("content-type", MEDIA.get(opt.getContentFormat())));
        }
        for (Option o : opt.getOthers(option)) {
            out.add(new Header(cookie, new String(o.getValue(), StandardCharsets.UTF_8)));
        }
        return out;
    }

    /** The CoAP code of an HTTP status (see the class comment). */
    static ResponseCode codeOf(int status) {
        switch (status) {
            case 200:
                return ResponseCode.CONTENT;
            case 201:
                return ResponseCode.CREATED;
            case 204:
                return ResponseCode.CHANGED;
            default:
                int detail = status % 100;
                try {
                    return ResponseCode.valueOf((status / 100) << 5 | (detail < 32 ? detail : 0));
                } catch (MessageFormatException e) { // a class CoAP has no codes for (1xx, 3xx)
                    return ResponseCode.INTERNAL_SERVER_ERROR;
                }
        }
    }

    static int statusOf(ResponseCode code) {
        switch (code) {
            case CONTENT:
            case DELETED:
                return 200;
            case CREATED:
                return 201;
            case CHANGED:
                return 204;
            default:
                return code.codeClass * 100 + code.codeDetail;
        }
    }

    static String methodOf(Code code) {
        for (Map.Entry<String, Code> e : METHODS.entrySet()) {
            if (e.getValue() == code) {
                return e.getKey();
            }
        }
        return null;
    }

    /** The bytes a message's options take on the wire (RFC 7252, 3.1). */
    static int optionBytes(OptionSet opt) {
        int total = 0;
        int previous = 0;
        for (Option o : opt.asSortedList()) {
            int delta = o.getNumber() - previous;
            int length = o.getLength();
            total += 1 + extension(delta) + extension(length) + length;
            previous = o.getNumber();
        }
        return total;
    }

    private static int extension(int value) {
        return value < 13 ? 0 : value < 269 ? 1 : 2;
    }
}
