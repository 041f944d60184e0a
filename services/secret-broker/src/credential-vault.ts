import { CredentialInput, ToolplaneError, type Connection, type EncryptedEnvelope } from '@toolplane/contracts';
import { decryptAtRest, encryptAtRest, isWrappedWithCurrentKek, rewrapAtRest, type Keyring } from '@toolplane/sealing';
import { z } from 'zod';
import { accessTokenContext, credentialContext, credentialPlaintext } from './core/connection-rules.js';

// The one place that turns credentials and access tokens into ciphertexts and back, each bound to its
// connection. Decryption failures become INTERNAL errors that name the connection, never any content.

type CredentialOwner = Pick<Connection, 'tenant' | 'workspace' | 'connectionId' | 'kind' | 'secretGeneration' | 'name'>;

const StoredToken = z.strictObject({ accessToken: z.string().min(1), scopes: z.array(z.string()).optional() });
/** An access token as the broker keeps it (encrypted). */
export type StoredToken = z.infer<typeof StoredToken>;

/** Encrypts and decrypts the secrets of connections under the configured keyring. */
export interface CredentialVault {
  /** Encrypts a credential for its connection (tenant, workspace, id, kind and generation are bound to it). */
  seal(owner: CredentialOwner, credential: CredentialInput): EncryptedEnvelope;
  /** Decrypts a connection's credential; INTERNAL if it is missing or does not decrypt for this connection. */
  open(connection: Connection): CredentialInput;
  sealToken(owner: CredentialOwner, token: StoredToken): EncryptedEnvelope;
  /** Decrypts a cached token; undefined if it does not decrypt (a stale generation, a retired KEK): fetch anew. */
  openToken(owner: CredentialOwner, envelope: EncryptedEnvelope): StoredToken | undefined;
  /** The connection's secret rewrapped under the current KEK, or undefined if it already is (or has none). */
  rewrap(connection: Connection): EncryptedEnvelope | undefined;
}

/** A vault over a keyring of key-encryption keys. */
export function createCredentialVault(keyring: Keyring): CredentialVault {
  return {
    seal: (owner, credential) => encryptAtRest(keyring, Buffer.from(credentialPlaintext(credential), 'utf8'), credentialContext(owner)),
    open(connection) {
      if (connection.secret === undefined) throw new ToolplaneError('INTERNAL', `connection ${connection.name} has no stored credential`);
      let plaintext: Buffer | undefined;
      try {
        plaintext = decryptAtRest(keyring, connection.secret, credentialContext(connection));
        const parsed = CredentialInput.safeParse(JSON.parse(plaintext.toString('utf8')));
        if (!parsed.success || parsed.data.kind !== connection.kind) throw new Error('unexpected content');
        return parsed.data;
      } catch (error) {
        const reason = hasFailure(error) ? ` (${error.failure})` : '';
        throw new ToolplaneError('INTERNAL', `the stored credential of connection ${connection.name} cannot be decrypted${reason}`);
      } finally {
        plaintext?.fill(0);
      }
    },
    sealToken: (owner, token) => encryptAtRest(keyring, Buffer.from(JSON.stringify(token), 'utf8'), accessTokenContext(owner)),
    openToken(owner, envelope) {
      let plaintext: Buffer | undefined;
      try {
        plaintext = decryptAtRest(keyring, envelope, accessTokenContext(owner));
        const parsed = StoredToken.safeParse(JSON.parse(plaintext.toString('utf8')));
        return parsed.success ? parsed.data : undefined;
      } catch {
        return undefined;
      } finally {
        plaintext?.fill(0);
      }
    },
    rewrap(connection) {
      if (connection.secret === undefined || isWrappedWithCurrentKek(keyring, connection.secret)) return undefined;
      return rewrapAtRest(keyring, connection.secret, credentialContext(connection));
    },
  };
}

function hasFailure(error: unknown): error is { failure: string } {
  return typeof error === 'object' && error !== null && typeof (error as { failure?: unknown }).failure === 'string';
}
