package ipclab.payload;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.util.zip.CRC32;
import java.util.zip.Deflater;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipException;

/**
 * gzip both ways, as the Python service: compression at level 6 with zlib's own gzip header
 * (modification time 0, operating system 3), which {@code zlib.compressobj(6, DEFLATED, 31)}
 * writes, so the compressed bytes can match byte for byte (the JDK's
 * {@code GZIPOutputStream} writes operating system 0); inflation in steps, refused with a
 * 413 once the body would pass the limit (a decompression bomb costs at most the limit).
 */
final class Gzip {
    static final int LEVEL = 6;
    private static final byte[] HEADER = {0x1f, (byte) 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
    private static final int STEP = 1 << 20;

    private Gzip() {
    }

    static byte[] compress(byte[] body) {
        Deflater deflater = new Deflater(LEVEL, true);
        ByteArrayOutputStream out = new ByteArrayOutputStream(body.length / 4 + 64);
        out.writeBytes(HEADER);
        try {
            deflater.setInput(body);
            deflater.finish();
            byte[] buf = new byte[STEP];
            while (!deflater.finished()) {
                int n = deflater.deflate(buf);
                out.write(buf, 0, n);
            }
        } finally {
            deflater.end();
        }
        CRC32 crc = new CRC32();
        crc.update(body);
        writeIntLe(out, (int) crc.getValue());
        writeIntLe(out, body.length);
        return out.toByteArray();
    }

    private static void writeIntLe(ByteArrayOutputStream out, int v) {
        out.write(v & 0xff);
        out.write((v >>> 8) & 0xff);
        out.write((v >>> 16) & 0xff);
        out.write((v >>> 24) & 0xff);
    }

    static byte[] inflate(byte[] body, long limit) throws Http.Refused {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (GZIPInputStream in = new GZIPInputStream(new ByteArrayInputStream(body), 65536)) {
            byte[] buf = new byte[STEP];
            long size = 0;
            int n;
            while ((n = in.read(buf)) > 0) {
                size += n;
                if (size > limit) {
                    throw new Http.Refused(413, "too_large",
                            "the gzip body inflates past " + limit + " bytes");
                }
                out.write(buf, 0, n);
            }
        } catch (EOFException e) {
            throw new Http.Refused(400, "bad_request", "the gzip body is truncated");
        } catch (ZipException e) {
            throw new Http.Refused(400, "bad_request",
                    "the gzip body does not inflate: " + e.getMessage());
        } catch (IOException e) {
            throw new Http.Refused(400, "bad_request",
                    "the gzip body does not inflate: " + e.getMessage());
        }
        return out.toByteArray();
    }
}
