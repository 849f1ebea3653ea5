export { checkPrefix, type SessionKeys, sessionKeys, sessionKeysByMember, tenantIndexKey } from './keys.js'
export { createRedisSessionStore, type RedisClient, type RedisSessionStoreOptions } from './redis-store.js'
