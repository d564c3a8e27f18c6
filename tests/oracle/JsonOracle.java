import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

import org.bson.BsonBinaryReader;
import org.bson.BsonDocument;
import org.bson.codecs.BsonDocumentCodec;
import org.bson.codecs.DecoderContext;
import org.bson.json.JsonMode;
import org.bson.json.JsonWriterSettings;

/**
 * Reads requests from stdin: a mode byte, then a BSON document (its own int32 length first); writes for each the
 * document's JSON as the driver's JsonWriter writes it, as a big-endian int32 byte count and UTF-8 bytes.
 * Modes are the settings Debezium's MongoDB connector uses:
 * S: strict, compact (JsonSerialization's COMPACT_JSON_SETTINGS: before/after/patch/filter);
 * R: relaxed with the default settings (BsonDocument.toJson(): updatedFields in 2.5+);
 * K: relaxed, compact, of {_id: <the document's _id>} (SIMPLE_JSON_SETTINGS: the key's id).
 */
public final class JsonOracle {
    private static JsonWriterSettings compact(JsonMode mode) {
        return JsonWriterSettings.builder().outputMode(mode).indent(true).indentCharacters("").newLineCharacters("")
                .build();
    }

    public static void main(String[] args) throws Exception {
        JsonWriterSettings strict = compact(JsonMode.STRICT);
        JsonWriterSettings relaxed = JsonWriterSettings.builder().outputMode(JsonMode.RELAXED).build();
        JsonWriterSettings key = compact(JsonMode.RELAXED);
        BsonDocumentCodec codec = new BsonDocumentCodec();
        DataInputStream in = new DataInputStream(new BufferedInputStream(System.in, 1 << 16));
        DataOutputStream out = new DataOutputStream(new BufferedOutputStream(System.out, 1 << 16));
        while (true) {
            int mode;
            try {
                mode = in.readUnsignedByte();
            } catch (EOFException end) {
                break;
            }
            if (mode == 'F') {
                out.flush();
                continue;
            }
            int length = Integer.reverseBytes(in.readInt());
            byte[] data = new byte[length];
            ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN).putInt(length);
            in.readFully(data, 4, length - 4);
            BsonDocument document = codec.decode(new BsonBinaryReader(ByteBuffer.wrap(data)), DecoderContext.builder().build());
            if (mode == 'K') {
                document = new BsonDocument("_id", document.get("_id"));
            }
            String text = document.toJson(mode == 'S' ? strict : mode == 'R' ? relaxed : key);
            byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
            out.writeInt(bytes.length);
            out.write(bytes);
        }
        out.flush();
    }
}
