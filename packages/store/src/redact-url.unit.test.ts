import { describe, expect, it } from 'vitest';
import { redactMongoUrl, scrubCredentials } from './redact-url.js';

describe('redactMongoUrl', () => {
  it.each([
    ['mongodb://127.0.0.1:27017', 'mongodb://127.0.0.1:27017'],
    ['mongodb://user:s3cret@db.example:27017/toolplane?authSource=admin', 'mongodb://***@db.example:27017/toolplane'],
    ['mongodb+srv://user:s3cret@cluster0.example.net/?retryWrites=true', 'mongodb+srv://***@cluster0.example.net/'],
    ['mongodb://a:1,b:2,c:3/db?replicaSet=rs0&tlsCertificateKeyFilePassword=hunter2', 'mongodb://a:1,b:2,c:3/db'],
    // Malformed: an unescaped `/` or `@` in the password must not leak either.
    ['mongodb://user:pa/ss@host:27017', 'mongodb://***@host:27017'],
    ['mongodb://user:p@ss@host', 'mongodb://***@host'],
    ['user:secret@host', '***@host'],
    ['not-a-url', 'not-a-url'],
  ])('%s → %s', (url, shown) => {
    expect(redactMongoUrl(url)).toBe(shown);
  });

  it('never contains the password', () => {
    expect(redactMongoUrl('mongodb://admin:TopSecret%21@h/db?authMechanismProperties=AWS_SESSION_TOKEN:abc')).not.toMatch(/TopSecret|abc/);
  });
});

describe('scrubCredentials', () => {
  it('removes the user info and the password from a message', () => {
    expect(scrubCredentials('bad uri admin:hunter22@h and hunter22', 'mongodb://admin:hunter22@h')).toBe('bad uri ***@h and ***');
  });

  it('leaves a message alone when the URL has no credentials', () => {
    expect(scrubCredentials('Invalid scheme', 'mongo://h')).toBe('Invalid scheme');
  });
});
